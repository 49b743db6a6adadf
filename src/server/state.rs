//! The server's settings ([`Config`]) and the state every handler and
//! background task shares ([`AppState`]): storage, clock, limiters, the
//! validator, the drawer and the metrics.

use super::clock::{Clock, SystemClock};
use super::metrics::Metrics;
use super::stripe::StripeConfig;
use super::{fetch, ratelimit};
use crate::store::blob_store::{self, BlobStores};
use crate::store::{Blobs, Store};
use crate::validator::Validator;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, Semaphore, watch};

/// Bytes in the specification's "MB".
pub const MB: u64 = 1_000_000;

/// Settings of a server.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the database and the blob folder live.
    pub data_dir: PathBuf,
    /// Where blobs and stills live instead of the data folder: a blob-store
    /// URL, `file://DIR` or `s3://BUCKET[/PREFIX]` (`store::blob_store`).
    pub blob_store: Option<String>,
    /// The public base address (upload URLs are built on it), no trailing slash.
    pub base_url: String,
    /// Lets `url` fetches and webhooks reach private and loopback addresses.
    pub allow_private_targets: bool,
    /// Exact addresses allowed as fetch and webhook targets despite the guard (tests).
    pub allow_exact_targets: Vec<SocketAddr>,
    /// Job workers.
    pub workers: usize,
    /// Engine runs at once (the blocking pool's bound).
    pub engine_slots: usize,
    /// Inputs up to this size are validated synchronously.
    pub sync_max_bytes: u64,
    /// No input is accepted above this, whatever the plan.
    pub hard_max_bytes: u64,
    /// The multipart request-body cap.
    pub multipart_max_bytes: u64,
    /// The `url` fetch cap.
    pub fetch_max_bytes: u64,
    /// The `url` fetch timeout (all redirects and the body included).
    pub fetch_timeout: Duration,
    /// When set, `url` may only name these hosts (every redirect hop
    /// included); an empty list turns `url` fetching off.
    pub fetch_allow_hosts: Option<Vec<String>>,
    /// Requests per minute per client IP on the public routes.
    pub public_per_min: u64,
    /// Report retention, seconds.
    pub report_ttl_s: i64,
    /// Unused upload retention, seconds.
    pub upload_ttl_s: i64,
    /// How long a shutdown waits for running jobs before putting them back in the queue.
    pub shutdown_grace: Duration,
    /// How often the janitor runs.
    pub janitor_every: Duration,
    /// Delay before the first retry of a failed webhook; doubled each time.
    pub webhook_backoff: Duration,
    /// Webhook attempts before giving up.
    pub webhook_attempts: i64,
    /// How long one webhook attempt may take, connection to last body byte
    /// (a target that hangs costs one of the 16 delivery slots this long; it
    /// never holds a job worker).
    pub webhook_timeout: Duration,
    /// The vision model behind POST /v1/inspect (none: 503 INSPECT_UNAVAILABLE).
    pub vision: Option<crate::vision::Config>,
    /// Stripe (none: the billing routes answer 503 BILLING_UNAVAILABLE).
    pub stripe: Option<StripeConfig>,
    /// Draw in a replaceable worker process (`exe render-worker`) instead of
    /// in the server: lavapipe keeps memory for every render pass, so a
    /// long-running server on a CPU-only host must not draw in process.
    pub render_worker: Option<(PathBuf, crate::render::worker::Limits)>,
    /// Render worker processes that may draw at once (with
    /// [`Config::render_worker`]); by default one per two cores
    /// ([`crate::render::worker::default_workers`]).
    pub render_workers: usize,
    /// Whether the per-key and per-IP request limits apply (off only for a
    /// private deployment behind a limiting gateway, or conformance runs).
    pub rate_limits: bool,
    /// Requests per minute per client IP on the screenshot route.
    pub media_per_min: u64,
    /// Requests per minute per client IP on POST /demo/validate.
    pub demo_per_min: u64,
    /// Largest file the demo accepts.
    pub demo_max_bytes: u64,
    /// The database: `sqlite:PATH` or `postgres://...` (none: the data
    /// folder's `meshcheck.sqlite`).
    pub database: Option<String>,
    /// How long a claimed job belongs to this node without a renewal; the
    /// worker renews it every third of this, and another node takes the job
    /// over once it runs out.
    pub job_lease: Duration,
    /// Whether this node runs the scheduled work (retention, expired
    /// uploads, ran-out leases, orphaned blobs); with several nodes, one at
    /// a time does, under an advisory lock.
    pub janitor: bool,
}

impl Config {
    /// The defaults of DESIGN.md for a data folder and base URL.
    pub fn new(data_dir: PathBuf, base_url: &str) -> Config {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        Config {
            data_dir,
            blob_store: None,
            base_url: base_url.trim_end_matches('/').to_string(),
            allow_private_targets: false,
            allow_exact_targets: Vec::new(),
            workers: cores,
            engine_slots: cores,
            sync_max_bytes: 20 * MB,
            hard_max_bytes: 250 * MB,
            multipart_max_bytes: 4_500_000,
            fetch_max_bytes: 25 * MB,
            fetch_timeout: Duration::from_secs(10),
            fetch_allow_hosts: None,
            public_per_min: 60,
            report_ttl_s: 30 * 86_400,
            upload_ttl_s: 86_400,
            shutdown_grace: Duration::from_secs(30),
            janitor_every: Duration::from_secs(60),
            webhook_backoff: Duration::from_secs(5),
            webhook_attempts: 8,
            webhook_timeout: Duration::from_secs(10),
            vision: None,
            stripe: None,
            render_worker: None,
            render_workers: crate::render::worker::default_workers(cores),
            rate_limits: true,
            media_per_min: 600,
            demo_per_min: 10,
            demo_max_bytes: 4_400_000,
            database: None,
            job_lease: Duration::from_secs(30),
            janitor: true,
        }
    }
}

/// Everything a handler needs; cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

/// The shared state behind [`AppState`].
pub struct Inner {
    /// Settings.
    pub config: Config,
    /// Accounts, credits, reports, jobs.
    pub store: Arc<dyn Store>,
    /// Transient input bytes.
    pub blobs: Arc<dyn Blobs>,
    /// Stored stills and turntables (kept with their report, render or inspection).
    pub shots: Arc<dyn Blobs>,
    /// The key that signs screenshot URLs (a server setting, made once).
    pub url_key: Vec<u8>,
    /// Where stills are drawn (see [`Config::render_worker`]).
    pub drawer: crate::render::Drawer,
    /// The demo account's key, made on first use (never sent anywhere).
    pub demo_key: std::sync::Mutex<Option<String>>,
    /// The time.
    pub clock: Arc<dyn Clock>,
    /// Token buckets.
    pub limiter: ratelimit::Limiter,
    /// Bounds engine runs (validation) to `engine_slots` at once.
    pub engine_slots: Arc<Semaphore>,
    /// The SSRF-guarded client for `url` (with the host allow-list, if any).
    pub fetcher: fetch::Fetcher,
    /// The SSRF-guarded client for webhooks.
    pub webhook_fetcher: fetch::Fetcher,
    /// The warm reference-validator pool for SPEC-001.
    pub validator: Option<Arc<Validator>>,
    /// Wakes the job workers.
    pub job_wake: Notify,
    /// Wakes the webhook sender.
    pub webhook_wake: Notify,
    /// Flips to true when the server is shutting down.
    pub stopping: watch::Sender<bool>,
    /// Operators' metrics (`state.metrics.lease_takeover()`, ...), served
    /// on the admin listener.
    pub metrics: Metrics,
    /// This process's name in job leases and logs (`node_` + random).
    pub node: String,
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// State over explicit parts (tests pass their own clock). Reads (or
    /// makes, on first start) the key that signs screenshot URLs.
    pub fn with_parts(
        config: Config,
        store: Arc<dyn Store>,
        blobs: Arc<dyn Blobs>,
        shots: Arc<dyn Blobs>,
        clock: Arc<dyn Clock>,
        validator: Option<Arc<Validator>>,
    ) -> crate::error::Result<AppState> {
        let url_key = store.setting_or_insert("screenshot_url_key", &crate::store::random_id("", 43))?.into_bytes();
        let policy = fetch::Policy {
            allow_private: config.allow_private_targets,
            allow_exact: config.allow_exact_targets.clone(),
            allow_hosts: None,
        };
        let url_policy = fetch::Policy { allow_hosts: config.fetch_allow_hosts.clone(), ..policy.clone() };
        let drawer = match &config.render_worker {
            Some((exe, limits)) => {
                let pool = crate::render::worker::Pool::new(exe.clone(), *limits, config.render_workers);
                crate::render::Drawer::Worker(Arc::new(pool))
            }
            None => crate::render::Drawer::Local,
        };
        let pool = match &drawer {
            crate::render::Drawer::Worker(pool) => Some(pool.clone()),
            crate::render::Drawer::Local => None,
        };
        let metrics = Metrics::new(store.clone(), pool);
        Ok(AppState(Arc::new(Inner {
            engine_slots: Arc::new(Semaphore::new(config.engine_slots.max(1))),
            fetcher: fetch::Fetcher::new(url_policy),
            webhook_fetcher: fetch::Fetcher::new(policy),
            limiter: ratelimit::Limiter::default(),
            job_wake: Notify::new(),
            webhook_wake: Notify::new(),
            stopping: watch::channel(false).0,
            metrics,
            node: crate::store::random_id("node_", 12),
            config,
            store,
            blobs,
            shots,
            url_key,
            demo_key: std::sync::Mutex::new(None),
            drawer,
            clock,
            validator,
        })))
    }

    /// Opens the data folder (`meshcheck.sqlite`) and the blob store
    /// (`blobs/` and `screenshots/` in the data folder unless
    /// [`Config::blob_store`] names another), with the system clock and the
    /// warm validator pool.
    pub fn open(config: Config) -> crate::error::Result<AppState> {
        std::fs::create_dir_all(&config.data_dir)
            .map_err(|e| crate::error::Error::internal(format!("cannot create {}: {e}", config.data_dir.display())))?;
        let store = crate::store::database::open(config.database.as_deref(), &config.data_dir)?;
        let BlobStores { blobs, shots } = blob_store::open(config.blob_store.as_deref(), &config.data_dir)?;
        let validator = Validator::global()?;
        AppState::with_parts(config, store, blobs, shots, Arc::new(SystemClock::new()), Some(validator))
    }

    /// Runs `f` on the blocking pool once an engine slot is free, so the
    /// async runtime never stalls on a validation. A panic is INTERNAL.
    pub async fn run_engine<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::result::Result<T, crate::error::Error> {
        let permit = self
            .engine_slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| crate::error::Error::internal("the engine pool is closed"))?;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            f()
        })
        .await
        .map_err(|e| crate::error::Error::internal(format!("engine task failed: {e}")))
    }

    /// Takes a token from bucket `key` of `per_min` per minute; always
    /// allowed (a full bucket) when rate limits are off.
    pub fn take(&self, key: &str, per_min: u64) -> ratelimit::Decision {
        if !self.config.rate_limits {
            return ratelimit::Decision {
                allowed: true,
                limit: per_min,
                remaining: per_min,
                reset_s: 0,
                retry_after_s: 0,
            };
        }
        let now_ms = self.clock.now_ms();
        if !self.store.shared() {
            return self.limiter.take(key, per_min, now_ms);
        }
        // Every node draws from the bucket's row. A store that cannot be
        // reached lets the request through (logged): the limits protect the
        // service, and the failing store fails the request anyway.
        let mut decision = None;
        let taken = self.store.update_bucket(key, &mut |old| {
            let (b, d) = ratelimit::step(old, per_min, now_ms);
            decision = Some(d);
            b
        });
        match (taken, decision) {
            (Ok(()), Some(d)) => d,
            (outcome, _) => {
                if let Err(e) = outcome {
                    tracing::error!(error = %e, "rate limit bucket not readable; request let through");
                }
                ratelimit::Decision { allowed: true, limit: per_min, remaining: per_min, reset_s: 0, retry_after_s: 0 }
            }
        }
    }

    /// Whether a shutdown has begun.
    pub fn is_stopping(&self) -> bool {
        *self.stopping.borrow()
    }
}
