//! `meshcheck serve`, `meshcheck accounts` and `meshcheck keys`.
//!
//! Settings come from the flags, else the environment (`MESHCHECK_ADDR`,
//! `MESHCHECK_DATA_DIR`, `MESHCHECK_BLOB_STORE`, `MESHCHECK_BASE_URL`,
//! `MESHCHECK_ALLOW_PRIVATE_TARGETS`, `MESHCHECK_FETCH_ALLOW_HOSTS`,
//! `MESHCHECK_LOG_FORMAT`, `MESHCHECK_METRICS_ADDR`, `MESHCHECK_DATABASE_URL`,
//! `MESHCHECK_JOB_LEASE`, `MESHCHECK_NO_JANITOR`, `MESHCHECK_BLOB_STORE`, `MESHCHECK_RENDER_WORKERS`), else
//! the `[serve]` table of the config file (`addr`, `data_dir`, `base_url`, `allow_private_targets`,
//! `fetch_allow_hosts`, `workers`, `log_format`, `metrics_addr`, `database`,
//! `job_lease`, `janitor`, `blob_store`, `render_workers`), else the defaults (docs/deploy.md lists them all).
//!
//! With a metrics address, `GET /metrics` is served on a second, admin
//! listener (docs/metrics.md); without one there is none. Both listeners
//! announce their bound address in the log before serving ("meshcheck
//! metrics listening", then "meshcheck serve listening"), so port 0 works.

use crate::error::{Error, Result};
use crate::server::{self, plan};
use crate::store::Store;
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Log formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per event.
    Json,
}

/// `meshcheck serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, env = "MESHCHECK_ADDR", value_name = "HOST:PORT")]
    pub addr: Option<String>,
    /// Folder for the database and the transient blobs [default: ./meshcheck-data].
    #[arg(long, env = "MESHCHECK_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Where upload and job bytes and stored stills live: file://DIR (folders
    /// DIR/blobs and DIR/screenshots) or s3://BUCKET[/PREFIX] (an
    /// S3-compatible bucket, configured by the AWS_* environment variables;
    /// docs/blob-store.md) [default: file://DATA_DIR].
    #[arg(long, env = "MESHCHECK_BLOB_STORE", value_name = "URL")]
    pub blob_store: Option<String>,
    /// Public base URL, used in upload URLs [default: http://ADDR].
    #[arg(long, env = "MESHCHECK_BASE_URL", value_name = "URL")]
    pub base_url: Option<String>,
    /// Let `url` fetches and webhooks reach loopback and private addresses
    /// (tests and closed networks only; logged as a warning).
    #[arg(long, env = "MESHCHECK_ALLOW_PRIVATE_TARGETS")]
    pub allow_private_targets: bool,
    /// Fetch `url` inputs only from these hosts (comma-separated; every
    /// redirect hop is checked). An empty value turns url fetching off.
    #[arg(long, env = "MESHCHECK_FETCH_ALLOW_HOSTS", value_name = "HOSTS")]
    pub fetch_allow_hosts: Option<String>,
    /// Job workers [default: the number of cores].
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Turn the per-key and per-IP request limits off (a private deployment
    /// behind a gateway that limits, or conformance runs; credits still
    /// apply; logged as a warning).
    #[arg(long, env = "MESHCHECK_NO_RATE_LIMITS")]
    pub no_rate_limits: bool,
    /// Draw stills in the server process instead of a worker process that
    /// is replaced every 50 renders or at 1 GB (for GPU drivers that do not
    /// leak; Mesa's lavapipe does).
    #[arg(long, env = "MESHCHECK_RENDER_IN_PROCESS")]
    pub render_in_process: bool,
    /// Render worker processes that may draw at once, each replaced on its
    /// own every 50 renders or at 1 GB; each gets LP_NUM_THREADS = cores / N
    /// [default: one per two cores, at least 1].
    #[arg(long, env = "MESHCHECK_RENDER_WORKERS", value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_RENDER_WORKERS))]
    pub render_workers: Option<u64>,
    /// Log format [default: text].
    #[arg(long, env = "MESHCHECK_LOG_FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,
    /// Serve Prometheus metrics (GET /metrics) on this separate admin
    /// address, never on the public one; keep it private [default: none,
    /// no metrics listener].
    #[arg(long, env = "MESHCHECK_METRICS_ADDR", value_name = "HOST:PORT")]
    pub metrics_addr: Option<String>,
    /// The database: sqlite:PATH, or postgres://USER:PASSWORD@HOST:PORT/DB
    /// for several nodes on one database [default: DATA_DIR/meshcheck.sqlite].
    #[arg(long, env = "MESHCHECK_DATABASE_URL", value_name = "URL")]
    pub database: Option<String>,
    /// Seconds a claimed job stays this node's without a renewal (renewed
    /// every third of it); another node takes the job over once it runs out
    /// [default: 30].
    #[arg(long, env = "MESHCHECK_JOB_LEASE", value_name = "SECS", value_parser = clap::value_parser!(u64).range(3..=3600))]
    pub job_lease: Option<u64>,
    /// Never run the scheduled work (retention, expired uploads, ran-out
    /// leases, orphaned blobs) on this node; with a shared database one
    /// node at a time runs it anyway.
    #[arg(long, env = "MESHCHECK_NO_JANITOR")]
    pub no_janitor: bool,
}

/// Most render workers `--render-workers` accepts.
const MAX_RENDER_WORKERS: u64 = 256;

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileServe {
    addr: Option<String>,
    data_dir: Option<PathBuf>,
    blob_store: Option<String>,
    base_url: Option<String>,
    allow_private_targets: Option<bool>,
    workers: Option<usize>,
    log_format: Option<LogFormat>,
    fetch_allow_hosts: Option<Vec<String>>,
    rate_limits: Option<bool>,
    render_in_process: Option<bool>,
    render_workers: Option<u64>,
    metrics_addr: Option<String>,
    database: Option<String>,
    job_lease: Option<u64>,
    janitor: Option<bool>,
}

fn file_settings() -> Result<FileServe> {
    let Some(path) = crate::vision::config_path() else { return Ok(FileServe::default()) };
    let Ok(text) = std::fs::read_to_string(&path) else { return Ok(FileServe::default()) };
    let table: toml::Table =
        toml::from_str(&text).map_err(|e| Error::bad_request(format!("{}: {}", path.display(), e.message())))?;
    match table.get("serve") {
        None => Ok(FileServe::default()),
        Some(v) => v
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| Error::bad_request(format!("{} [serve]: {}", path.display(), e.message()))),
    }
}

/// Where `accounts` and `keys` find the server's database.
#[derive(Debug, Args)]
pub struct DataDirArg {
    /// The server's data folder [default: ./meshcheck-data].
    #[arg(long, env = "MESHCHECK_DATA_DIR", value_name = "DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// The server's database, as given to `serve --database` [default:
    /// DATA_DIR/meshcheck.sqlite].
    #[arg(long, env = "MESHCHECK_DATABASE_URL", value_name = "URL", global = true)]
    pub database: Option<String>,
}

/// `meshcheck accounts`.
#[derive(Debug, Args)]
pub struct AccountsArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: AccountsAction,
    #[command(flatten)]
    /// Where.
    pub dir: DataDirArg,
}

/// Account actions.
#[derive(Debug, Subcommand)]
pub enum AccountsAction {
    /// Create an account and print its first API key (shown once).
    Create {
        /// Plan: free, indie, studio or scale.
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(["free", "indie", "studio", "scale"]))]
        plan: String,
        /// Contact address.
        #[arg(long)]
        email: Option<String>,
        /// Print JSON (`account_id`, `api_key`, `plan`) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List accounts with their plan, balance and keys (prefixes only).
    List,
}

/// `meshcheck keys`.
#[derive(Debug, Args)]
pub struct KeysArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: KeysAction,
    #[command(flatten)]
    /// Where.
    pub dir: DataDirArg,
}

/// Key actions.
#[derive(Debug, Subcommand)]
pub enum KeysAction {
    /// Make another key for an account and print it (shown once).
    Create {
        /// The account (acct_...).
        #[arg(long)]
        account: String,
    },
    /// Revoke a key, given in full or by its first 12 characters.
    Revoke {
        /// The key or its prefix.
        key: String,
    },
}

fn data_dir(d: &Option<PathBuf>) -> Result<PathBuf> {
    Ok(match d {
        Some(p) => p.clone(),
        None => file_settings()?.data_dir.unwrap_or_else(|| PathBuf::from("meshcheck-data")),
    })
}

fn open_store(arg: &DataDirArg) -> Result<std::sync::Arc<dyn Store>> {
    let database = match &arg.database {
        Some(d) => Some(d.clone()),
        None => file_settings()?.database,
    };
    let dir = data_dir(&arg.data_dir)?;
    if database.is_none() {
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::bad_request(format!("cannot create {}: {e}", dir.display())))?;
    }
    crate::store::database::open(database.as_deref(), &dir)
}

fn now() -> i64 {
    use server::clock::Clock;
    server::clock::SystemClock::new().now()
}

/// Runs `meshcheck accounts`.
pub fn accounts(args: AccountsArgs) -> Result<i32> {
    let store = open_store(&args.dir)?;
    match args.action {
        AccountsAction::Create { plan, email, json } => {
            let (account, key) = store.create_account(&plan, email.as_deref(), now())?;
            if json {
                println!("{}", serde_json::json!({"account_id": account.id, "api_key": key, "plan": account.plan}));
            } else {
                println!("account {} ({} plan)", account.id, account.plan);
                println!("api key {key}");
                eprintln!("Keep the key: it is shown once and stored only as a hash.");
            }
        }
        AccountsAction::List => {
            let t = now();
            for a in store.accounts()? {
                let p = plan::plan(&a.plan).map(|p| p.monthly_credits).unwrap_or(0);
                let used = store.credits_used(&a.id, server::clock::period_start(a.created_at, t))?;
                let keys: Vec<String> = store
                    .keys(&a.id)?
                    .into_iter()
                    .map(|k| format!("{}…{}", k.prefix, if k.revoked_at.is_some() { " (revoked)" } else { "" }))
                    .collect();
                println!(
                    "{}  {:<6}  balance {:>6}  {}  keys: {}",
                    a.id,
                    a.plan,
                    p - used,
                    a.email.as_deref().unwrap_or("-"),
                    keys.join(", ")
                );
            }
        }
    }
    Ok(0)
}

/// Runs `meshcheck keys`.
pub fn keys(args: KeysArgs) -> Result<i32> {
    let store = open_store(&args.dir)?;
    match args.action {
        KeysAction::Create { account } => {
            let key = store.create_key(&account, crate::store::LIVE_KEY_PREFIX, now()).map_err(|e| {
                if e.code == crate::error::ErrorCode::NotFound { Error::bad_request(e.message) } else { e }
            })?;
            println!("{key}");
        }
        KeysAction::Revoke { key } => {
            let n = store.revoke_key(&key, now())?;
            if n == 0 {
                return Err(Error::bad_request(format!("no live key matches {key:?}")));
            }
            println!("revoked {n} key{}", if n == 1 { "" } else { "s" });
        }
    }
    Ok(0)
}

/// Runs `meshcheck serve` until SIGTERM or Ctrl-C.
pub fn serve(args: ServeArgs) -> Result<i32> {
    let file = file_settings()?;
    let addr = args.addr.or(file.addr).unwrap_or_else(|| "127.0.0.1:8080".into());
    let data_dir = args.data_dir.or(file.data_dir).unwrap_or_else(|| PathBuf::from("meshcheck-data"));
    let format = args.log_format.or(file.log_format).unwrap_or(LogFormat::Text);
    let metrics_addr = args.metrics_addr.or(file.metrics_addr);
    init_logging(format);
    // Each job's large arrays in mappings of their own, and what every job
    // freed handed back once it is done, so that one job's freed memory is
    // not the floor under the next one's peak.
    crate::engine::steady_large_blocks();
    crate::engine::hand_back_after_every_input();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::internal(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .map_err(|e| Error::bad_request(format!("cannot listen on {addr}: {e}")))?;
        let local = listener.local_addr().map_err(|e| Error::internal(e.to_string()))?;
        let admin = match &metrics_addr {
            Some(a) => Some(
                tokio::net::TcpListener::bind(a)
                    .await
                    .map_err(|e| Error::bad_request(format!("cannot listen on the metrics address {a}: {e}")))?,
            ),
            None => None,
        };
        let base_url = args.base_url.or(file.base_url).unwrap_or_else(|| format!("http://{local}"));
        let mut config = server::Config::new(data_dir, &base_url);
        config.blob_store = args.blob_store.or(file.blob_store);
        config.allow_private_targets = args.allow_private_targets || file.allow_private_targets.unwrap_or(false);
        config.fetch_allow_hosts = match args.fetch_allow_hosts {
            Some(list) => Some(list.split(',').map(str::trim).filter(|h| !h.is_empty()).map(str::to_string).collect()),
            None => file.fetch_allow_hosts,
        };
        if let Some(w) = args.workers.or(file.workers) {
            config.workers = w.max(1);
        }
        config.database = args.database.or(file.database);
        if let Some(s) = args.job_lease.or(file.job_lease) {
            config.job_lease = std::time::Duration::from_secs(s.clamp(3, 3600));
        }
        config.janitor = !args.no_janitor && file.janitor.unwrap_or(true);
        config.vision = match crate::vision::Config::from_env() {
            Ok(v) => Some(v),
            Err(e) if e.code == crate::error::ErrorCode::InspectUnavailable => {
                tracing::info!("no vision model configured: POST /v1/inspect answers 503 INSPECT_UNAVAILABLE");
                None
            }
            Err(e) => return Err(e),
        };
        config.stripe = server::billing::StripeConfig::from_env()?;
        if config.stripe.is_none() {
            tracing::info!("STRIPE_SECRET_KEY is not set: the billing routes answer 503 BILLING_UNAVAILABLE");
        }
        config.rate_limits = !args.no_rate_limits && file.rate_limits.unwrap_or(true);
        if !(args.render_in_process || file.render_in_process.unwrap_or(false)) {
            let exe = std::env::current_exe()
                .map_err(|e| Error::internal(format!("cannot find this program to start render workers: {e}")))?;
            config.render_worker = Some((exe, crate::render::worker::Limits::default()));
        }
        if let Some(n) = args.render_workers {
            config.render_workers = n as usize;
        } else if let Some(n) = file.render_workers {
            if !(1..=MAX_RENDER_WORKERS).contains(&n) {
                return Err(Error::bad_request(format!(
                    "[serve] render_workers must be between 1 and {MAX_RENDER_WORKERS}, got {n}"
                )));
            }
            config.render_workers = n as usize;
        }
        if !config.rate_limits {
            tracing::warn!("--no-rate-limits: no request limits per key or per IP (credits still apply)");
        }
        if config.allow_private_targets {
            tracing::warn!("--allow-private-targets: url fetches and webhooks may reach loopback and private networks");
        }
        let state = tokio::task::spawn_blocking(move || server::AppState::open(config))
            .await
            .map_err(|e| Error::internal(e.to_string()))??;
        if let Some(url) = &state.config.blob_store {
            tracing::info!(blob_store = %url, "blobs and stills are in the blob store");
        }
        // Before any address is announced: a SIGTERM from then on is a clean stop.
        let shutdown = server::shutdown_signal();
        let admin = match admin {
            Some(admin) => {
                let at = admin.local_addr().map_err(|e| Error::internal(e.to_string()))?;
                if !at.ip().is_loopback() {
                    tracing::warn!(addr = %at, "the metrics listener is reachable beyond this host: keep it private (firewall, private network)");
                }
                tracing::info!(addr = %at, "meshcheck metrics listening");
                Some(tokio::spawn(server::admin::serve(admin, state.clone())))
            }
            None => None,
        };
        tracing::info!(addr = %local, base_url = %state.config.base_url, data_dir = %state.config.data_dir.display(), node = %state.node, "meshcheck serve listening");
        let served = server::serve(listener, state, shutdown).await;
        // The admin listener stops when the server begins to stop.
        if let Some(task) = admin {
            match task.await {
                Ok(Err(e)) => tracing::error!(error = %e, "the metrics listener failed"),
                Err(e) => tracing::error!(error = %e, "the metrics listener failed"),
                Ok(Ok(())) => {}
            }
        }
        served.map_err(|e| Error::internal(format!("server: {e}")))?;
        tracing::info!("stopped");
        Ok(0)
    })
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MESHCHECK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none());
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}
