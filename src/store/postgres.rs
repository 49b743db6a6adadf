//! [`Store`] on PostgreSQL (the `postgres` crate, synchronous like the
//! trait), for several nodes sharing one database:
//!
//! - Migrations (`pg/NNN_*.sql`, recorded in `meshcheck_migrations`) run at
//!   open under a session advisory lock, so nodes that start together apply
//!   each one once.
//! - Jobs are claimed with `FOR UPDATE SKIP LOCKED` under a lease
//!   (`lease_owner`, `lease_until`); a job whose lease ran out is claimed
//!   again by any node (a takeover). A job's finish, its refund and its
//!   webhook message are one transaction, made only by the lease's holder.
//! - Charges lock the account's row, refunds the reference (a transaction
//!   advisory lock), so concurrent nodes never overdraw or refund twice.
//! - `NOTIFY meshcheck_jobs` when a job is queued; [`Store::listen_jobs`]
//!   holds a connection in `LISTEN` on a thread of its own.
//! - Token buckets are rows read `FOR UPDATE` and written in one
//!   transaction; [`Store::exclusive`] is `pg_try_advisory_lock`.
//!
//! The trait is synchronous and the server calls it from async handlers:
//! every call runs through `blocking`, which lets the runtime know (a
//! multi-thread worker moves its other tasks away) or, on a current-thread
//! runtime, runs on a scoped thread. Connections come from a small pool.
//! Connections are plain TCP or a Unix socket (no TLS in this build: keep
//! the database on a private network; docs/deploy.md).

use super::{
    Account, Bucket, Charge, Claimed, Delivery, Finish, Job, KeyInfo, ReportLookup, Shot, Store, Upload, db_error,
    key_hash, new_key, random_id, upload_state,
};
use crate::error::{Error, ErrorCode, Result};
use postgres::{Client, GenericClient, NoTls, Row};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// The migrations, in order; entry `i` is version `i + 1`.
const MIGRATIONS: &[&str] = &[include_str!("pg/001_init.sql")];

/// The channel a queued job is announced on.
const JOBS_CHANNEL: &str = "meshcheck_jobs";

/// Advisory-lock namespaces (the first key of the two-key form).
const LOCK_MIGRATIONS: i32 = 7_301;
const LOCK_REFUND: i32 = 7_302;
const LOCK_EXCLUSIVE: i32 = 7_303;

/// Connections open at most; callers beyond wait for one.
const POOL_MAX: usize = 16;

/// Runs `f`, which blocks on the network, from wherever the trait is
/// called: inside a multi-thread runtime through `block_in_place`, inside a
/// current-thread runtime on a scoped thread (the `postgres` crate drives
/// its own runtime, which may not start inside another), else directly.
fn blocking<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        Ok(_) => std::thread::scope(|s| s.spawn(f).join().unwrap_or_else(|p| std::panic::resume_unwind(p))),
        Err(_) => f(),
    }
}

/// A bounded pool of connections.
struct Pool {
    config: postgres::Config,
    idle: Mutex<(Vec<Client>, usize)>,
    freed: Condvar,
}

impl Pool {
    fn get(&self) -> Result<Client> {
        let mut g = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            while let Some(c) = g.0.pop() {
                if !c.is_closed() {
                    return Ok(c);
                }
                g.1 -= 1;
            }
            if g.1 < POOL_MAX {
                g.1 += 1;
                drop(g);
                return self.config.connect(NoTls).map_err(|e| {
                    self.idle.lock().unwrap_or_else(|p| p.into_inner()).1 -= 1;
                    self.freed.notify_one();
                    db_error(e)
                });
            }
            g = self.freed.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn put(&self, c: Client) {
        let mut g = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if c.is_closed() {
            g.1 -= 1;
        } else {
            g.0.push(c);
        }
        self.freed.notify_one();
    }
}

/// The PostgreSQL store.
pub struct PgStore {
    pool: Pool,
}

impl PgStore {
    /// Connects to `url` (`postgres://user:password@host:port/db`, or the
    /// key=value form) and brings the schema up to date.
    pub fn open(url: &str) -> Result<PgStore> {
        let config: postgres::Config = url
            .parse()
            .map_err(|e| Error::bad_request(format!("--database: not a PostgreSQL connection string: {e}")))?;
        let store = PgStore { pool: Pool { config, idle: Mutex::new((Vec::new(), 0)), freed: Condvar::new() } };
        store.with(migrate)?;
        Ok(store)
    }

    /// Runs `f` on a pooled connection (see [`blocking`]).
    fn with<T: Send>(&self, f: impl FnOnce(&mut Client) -> Result<T> + Send) -> Result<T> {
        blocking(|| {
            let mut c = self.pool.get()?;
            let out = f(&mut c);
            self.pool.put(c);
            out
        })
    }

    /// Runs `f` in one transaction (committed when it returns Ok).
    fn tx<T: Send>(&self, f: impl FnOnce(&mut postgres::Transaction<'_>) -> Result<T> + Send) -> Result<T> {
        self.with(|c| {
            let mut tx = c.transaction().map_err(db_error)?;
            let out = f(&mut tx)?;
            tx.commit().map_err(db_error)?;
            Ok(out)
        })
    }
}

/// Applies the migrations this database lacks, one node at a time.
fn migrate(c: &mut Client) -> Result<()> {
    c.execute("SELECT pg_advisory_lock($1, 0)", &[&LOCK_MIGRATIONS]).map_err(db_error)?;
    let out = (|| {
        c.batch_execute(
            "CREATE TABLE IF NOT EXISTS meshcheck_migrations (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)",
        )
        .map_err(db_error)?;
        let version: i64 =
            c.query_one("SELECT COALESCE(MAX(version), 0) FROM meshcheck_migrations", &[]).map_err(db_error)?.get(0);
        if version as usize > MIGRATIONS.len() {
            return Err(Error::internal(format!(
                "the database has schema version {version}, newer than this meshcheck ({}); upgrade meshcheck",
                MIGRATIONS.len()
            )));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let mut tx = c.transaction().map_err(db_error)?;
            tx.batch_execute(sql).map_err(db_error)?;
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            tx.execute(
                "INSERT INTO meshcheck_migrations (version, applied_at) VALUES ($1, $2)",
                &[&((i + 1) as i64), &(now as i64)],
            )
            .map_err(db_error)?;
            tx.commit().map_err(db_error)?;
        }
        Ok(())
    })();
    let unlocked = c.execute("SELECT pg_advisory_unlock($1, 0)", &[&LOCK_MIGRATIONS]).map_err(db_error);
    out.and(unlocked.map(|_| ()))
}

const ACCOUNT_COLS: &str =
    "id, email, plan, webhook_secret, created_at, customer_id, subscription_provider, subscription_id";

fn account_row(r: &Row) -> Account {
    Account {
        id: r.get(0),
        email: r.get(1),
        plan: r.get(2),
        webhook_secret: r.get(3),
        created_at: r.get(4),
        customer_id: r.get(5),
        subscription_provider: r.get(6),
        subscription_id: r.get(7),
    }
}

const UPLOAD_COLS: &str = "id, blob_id, account_id, state, bytes, expires_at";

fn upload_row(r: &Row) -> Upload {
    Upload {
        id: r.get(0),
        blob_id: r.get(1),
        account_id: r.get(2),
        state: r.get(3),
        bytes: r.get(4),
        expires_at: r.get(5),
    }
}

const JOB_COLS: &str = "id, account_id, kind, status, params, input, webhook_url, credits, attempts, result, created_at, updated_at, lease_owner, lease_until";

fn job_row(r: &Row) -> Job {
    Job {
        id: r.get(0),
        account_id: r.get(1),
        kind: r.get(2),
        status: r.get(3),
        params: r.get(4),
        input: r.get(5),
        webhook_url: r.get(6),
        credits: r.get(7),
        attempts: r.get(8),
        result: r.get(9),
        created_at: r.get(10),
        updated_at: r.get(11),
        lease_owner: r.get(12),
        lease_until: r.get(13),
    }
}

const DELIVERY_COLS: &str = "id, job_id, account_id, url, body, state, attempts, next_at";

fn delivery_row(r: &Row) -> Delivery {
    Delivery {
        id: r.get(0),
        job_id: r.get(1),
        account_id: r.get(2),
        url: r.get(3),
        body: r.get(4),
        state: r.get(5),
        attempts: r.get(6),
        next_at: r.get(7),
    }
}

const SHOT_COLS: &str = "id, owner_id, account_id, name, ext, rv, rh, size, created_at, expires_at";

fn shot_row(r: &Row) -> Shot {
    Shot {
        id: r.get(0),
        owner_id: r.get(1),
        account_id: r.get(2),
        name: r.get(3),
        ext: r.get(4),
        rv: r.get(5),
        rh: r.get(6),
        size: r.get(7),
        created_at: r.get(8),
        expires_at: r.get(9),
    }
}

fn insert_key(c: &mut impl GenericClient, account_id: &str, prefix: &str, now: i64) -> Result<String> {
    let key = new_key(prefix);
    c.execute(
        "INSERT INTO api_keys (hash, prefix, account_id, created_at) VALUES ($1, $2, $3, $4)",
        &[&key_hash(&key), &&key[..12], &account_id, &now],
    )
    .map_err(db_error)?;
    Ok(key)
}

fn used(c: &mut impl GenericClient, account_id: &str, period: i64) -> Result<i64> {
    let r = c
        .query_one(
            "SELECT COALESCE(SUM(credits), 0)::BIGINT FROM ledger WHERE account_id = $1 AND period = $2",
            &[&account_id, &period],
        )
        .map_err(db_error)?;
    Ok(r.get(0))
}

/// Charges inside the caller's transaction, the account's row locked so
/// concurrent charges on other nodes wait their turn.
#[allow(clippy::too_many_arguments)]
fn charge_in(
    tx: &mut postgres::Transaction<'_>,
    account_id: &str,
    credits: i64,
    allowance: i64,
    period: i64,
    reason: &str,
    reference: &str,
    now: i64,
) -> Result<Charge> {
    tx.query_opt("SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE", &[&account_id]).map_err(db_error)?;
    let balance = allowance - used(tx, account_id, period)?;
    if balance < credits {
        return Ok(Charge::Insufficient { balance: balance.max(0), required: credits });
    }
    tx.execute(
        "INSERT INTO ledger (account_id, at, period, credits, reason, reference) VALUES ($1, $2, $3, $4, $5, $6)",
        &[&account_id, &now, &period, &credits, &reason, &reference],
    )
    .map_err(db_error)?;
    Ok(Charge::Charged { balance: balance - credits })
}

/// Refunds what is still charged under `reference`, inside the caller's
/// transaction, with the reference locked so two nodes cannot both refund it.
fn refund_in(tx: &mut postgres::Transaction<'_>, reference: &str, reason: &str, now: i64) -> Result<i64> {
    tx.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", &[&LOCK_REFUND, &reference]).map_err(db_error)?;
    let row = tx
        .query_opt(
            "SELECT account_id, MIN(period), SUM(credits)::BIGINT FROM ledger WHERE reference = $1 GROUP BY account_id",
            &[&reference],
        )
        .map_err(db_error)?;
    let Some(row) = row else { return Ok(0) };
    let (account_id, period, outstanding): (String, i64, i64) = (row.get(0), row.get(1), row.get(2));
    if outstanding <= 0 {
        return Ok(0);
    }
    tx.execute(
        "INSERT INTO ledger (account_id, at, period, credits, reason, reference) VALUES ($1, $2, $3, $4, $5, $6)",
        &[&account_id, &now, &period, &-outstanding, &reason, &reference],
    )
    .map_err(db_error)?;
    Ok(outstanding)
}

fn insert_delivery_in(c: &mut impl GenericClient, d: &Delivery, now: i64) -> Result<()> {
    c.execute(
        "INSERT INTO webhook_deliveries (id, job_id, account_id, url, body, state, attempts, next_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &[&d.id, &d.job_id, &d.account_id, &d.url, &d.body, &d.state, &d.attempts, &d.next_at, &now],
    )
    .map(|_| ())
    .map_err(db_error)
}

fn notify_jobs(c: &mut impl GenericClient) -> Result<()> {
    c.execute("SELECT pg_notify($1, '')", &[&JOBS_CHANNEL]).map(|_| ()).map_err(db_error)
}

impl Store for PgStore {
    fn create_account(&self, plan: &str, email: Option<&str>, now: i64) -> Result<(Account, String)> {
        let account = Account {
            id: random_id("acct_", 16),
            email: email.map(str::to_string),
            plan: plan.to_string(),
            webhook_secret: random_id("whsec_", 32),
            created_at: now,
            customer_id: None,
            subscription_provider: None,
            subscription_id: None,
        };
        let a = account.clone();
        let key = self.tx(move |tx| {
            tx.execute(
                "INSERT INTO accounts (id, email, plan, webhook_secret, created_at) VALUES ($1, $2, $3, $4, $5)",
                &[&a.id, &a.email, &a.plan, &a.webhook_secret, &now],
            )
            .map_err(db_error)?;
            insert_key(tx, &a.id, super::LIVE_KEY_PREFIX, now)
        })?;
        Ok((account, key))
    }

    fn accounts(&self) -> Result<Vec<Account>> {
        self.with(|c| {
            let rows = c
                .query(&format!("SELECT {ACCOUNT_COLS} FROM accounts ORDER BY created_at, id"), &[])
                .map_err(db_error)?;
            Ok(rows.iter().map(account_row).collect())
        })
    }

    fn account(&self, id: &str) -> Result<Option<Account>> {
        self.with(|c| {
            let r =
                c.query_opt(&format!("SELECT {ACCOUNT_COLS} FROM accounts WHERE id = $1"), &[&id]).map_err(db_error)?;
            Ok(r.as_ref().map(account_row))
        })
    }

    fn keys(&self, account_id: &str) -> Result<Vec<KeyInfo>> {
        self.with(|c| {
            let rows = c
                .query(
                    "SELECT prefix, account_id, created_at, revoked_at FROM api_keys WHERE account_id = $1 ORDER BY created_at",
                    &[&account_id],
                )
                .map_err(db_error)?;
            Ok(rows
                .iter()
                .map(|r| KeyInfo { prefix: r.get(0), account_id: r.get(1), created_at: r.get(2), revoked_at: r.get(3) })
                .collect())
        })
    }

    fn create_key(&self, account_id: &str, prefix: &str, now: i64) -> Result<String> {
        self.with(|c| {
            let exists = c.query_opt("SELECT 1 FROM accounts WHERE id = $1", &[&account_id]).map_err(db_error)?;
            if exists.is_none() {
                return Err(Error::new(ErrorCode::NotFound, format!("no account {account_id}")));
            }
            insert_key(c, account_id, prefix, now)
        })
    }

    fn revoke_key(&self, key_or_prefix: &str, now: i64) -> Result<usize> {
        self.with(|c| {
            let n = if key_or_prefix.len() > 12 {
                c.execute(
                    "UPDATE api_keys SET revoked_at = $2 WHERE hash = $1 AND revoked_at IS NULL",
                    &[&key_hash(key_or_prefix), &now],
                )
            } else {
                c.execute(
                    "UPDATE api_keys SET revoked_at = $2 WHERE prefix = $1 AND revoked_at IS NULL",
                    &[&key_or_prefix, &now],
                )
            };
            n.map(|n| n as usize).map_err(db_error)
        })
    }

    fn account_for_key(&self, key: &str) -> Result<Option<Account>> {
        let cols = ACCOUNT_COLS.split(", ").map(|c| format!("a.{c}")).collect::<Vec<_>>().join(", ");
        self.with(|c| {
            let r = c
                .query_opt(
                    &format!(
                        "SELECT {cols} FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.hash = $1 AND k.revoked_at IS NULL"
                    ),
                    &[&key_hash(key)],
                )
                .map_err(db_error)?;
            Ok(r.as_ref().map(account_row))
        })
    }

    fn credits_used(&self, account_id: &str, period: i64) -> Result<i64> {
        self.with(|c| used(c, account_id, period))
    }

    fn charge(
        &self,
        account_id: &str,
        credits: i64,
        allowance: i64,
        period: i64,
        reason: &str,
        reference: &str,
        now: i64,
    ) -> Result<Charge> {
        self.tx(|tx| charge_in(tx, account_id, credits, allowance, period, reason, reference, now))
    }

    fn refund(&self, reference: &str, reason: &str, now: i64) -> Result<i64> {
        self.tx(|tx| refund_in(tx, reference, reason, now))
    }

    fn ledger(&self, account_id: &str, period: i64) -> Result<Vec<(i64, i64, String, String)>> {
        self.with(|c| {
            let rows = c
                .query(
                    "SELECT at, credits, reason, reference FROM ledger WHERE account_id = $1 AND period = $2 ORDER BY id",
                    &[&account_id, &period],
                )
                .map_err(db_error)?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3))).collect())
        })
    }

    fn put_report(&self, id: &str, account_id: &str, created_at: i64, expires_at: i64, body: &str) -> Result<()> {
        self.with(|c| {
            c.execute(
                "INSERT INTO reports (id, account_id, created_at, expires_at, body) VALUES ($1, $2, $3, $4, $5)",
                &[&id, &account_id, &created_at, &expires_at, &body],
            )
            .map(|_| ())
            .map_err(db_error)
        })
    }

    fn report(&self, id: &str, account_id: &str) -> Result<ReportLookup> {
        self.with(|c| {
            if let Some(r) = c
                .query_opt("SELECT body FROM reports WHERE id = $1 AND account_id = $2", &[&id, &account_id])
                .map_err(db_error)?
            {
                return Ok(ReportLookup::Found(r.get(0)));
            }
            let gone = c
                .query_opt("SELECT 1 FROM report_tombstones WHERE id = $1 AND account_id = $2", &[&id, &account_id])
                .map_err(db_error)?;
            Ok(if gone.is_some() { ReportLookup::Expired } else { ReportLookup::Missing })
        })
    }

    fn expire_reports(&self, now: i64) -> Result<usize> {
        self.tx(|tx| {
            tx.execute(
                "INSERT INTO report_tombstones (id, account_id, expired_at)
                 SELECT id, account_id, $1 FROM reports WHERE expires_at <= $1 ON CONFLICT DO NOTHING",
                &[&now],
            )
            .map_err(db_error)?;
            tx.execute("DELETE FROM reports WHERE expires_at <= $1", &[&now]).map(|n| n as usize).map_err(db_error)
        })
    }

    fn create_upload(&self, account_id: &str, now: i64, expires_at: i64) -> Result<Upload> {
        let up = Upload {
            id: random_id("upl_", 24),
            blob_id: random_id("blob_", 24),
            account_id: account_id.to_string(),
            state: upload_state::PENDING.into(),
            bytes: None,
            expires_at,
        };
        self.with(|c| {
            c.execute(
                "INSERT INTO uploads (id, blob_id, account_id, state, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)",
                &[&up.id, &up.blob_id, &up.account_id, &up.state, &now, &expires_at],
            )
            .map_err(db_error)
        })?;
        Ok(up)
    }

    fn upload(&self, id: &str) -> Result<Option<Upload>> {
        self.with(|c| {
            let r =
                c.query_opt(&format!("SELECT {UPLOAD_COLS} FROM uploads WHERE id = $1"), &[&id]).map_err(db_error)?;
            Ok(r.as_ref().map(upload_row))
        })
    }

    fn upload_by_blob(&self, blob_id: &str, account_id: &str) -> Result<Option<Upload>> {
        self.with(|c| {
            let r = c
                .query_opt(
                    &format!("SELECT {UPLOAD_COLS} FROM uploads WHERE blob_id = $1 AND account_id = $2"),
                    &[&blob_id, &account_id],
                )
                .map_err(db_error)?;
            Ok(r.as_ref().map(upload_row))
        })
    }

    fn move_upload(&self, id: &str, from: &str, to: &str, bytes: Option<i64>) -> Result<bool> {
        self.with(|c| {
            c.execute(
                "UPDATE uploads SET state = $3, bytes = COALESCE($4, bytes) WHERE id = $1 AND state = $2",
                &[&id, &from, &to, &bytes],
            )
            .map(|n| n == 1)
            .map_err(db_error)
        })
    }

    fn expire_uploads(&self, now: i64) -> Result<Vec<Upload>> {
        self.with(|c| {
            // The rows as they were before the update (RETURNING alone gives the new state).
            let cols = UPLOAD_COLS.split(", ").map(|c| format!("old.{c}")).collect::<Vec<_>>().join(", ");
            let rows = c
                .query(
                    &format!(
                        "WITH old AS (
                            SELECT {UPLOAD_COLS} FROM uploads
                            WHERE state IN ('pending', 'receiving', 'stored') AND expires_at <= $1
                            FOR UPDATE SKIP LOCKED)
                         UPDATE uploads u SET state = 'expired' FROM old WHERE u.id = old.id
                         RETURNING {cols}"
                    ),
                    &[&now],
                )
                .map_err(db_error)?;
            Ok(rows.iter().map(upload_row).collect())
        })
    }

    fn charge_and_queue(&self, job: &Job, allowance: i64, period: i64, reason: &str) -> Result<Charge> {
        self.tx(|tx| {
            let charged =
                charge_in(tx, &job.account_id, job.credits, allowance, period, reason, &job.id, job.created_at)?;
            if let Charge::Charged { .. } = charged {
                tx.execute(
                    &format!(
                        "INSERT INTO jobs ({JOB_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, NULL, NULL)"
                    ),
                    &[
                        &job.id,
                        &job.account_id,
                        &job.kind,
                        &job.status,
                        &job.params,
                        &job.input,
                        &job.webhook_url,
                        &job.credits,
                        &job.attempts,
                        &job.result,
                        &job.created_at,
                        &job.updated_at,
                    ],
                )
                .map_err(db_error)?;
                notify_jobs(tx)?;
            }
            Ok(charged)
        })
    }

    fn job(&self, id: &str, account_id: &str) -> Result<Option<Job>> {
        self.with(|c| {
            let r = c
                .query_opt(
                    &format!("SELECT {JOB_COLS} FROM jobs WHERE id = $1 AND account_id = $2"),
                    &[&id, &account_id],
                )
                .map_err(db_error)?;
            Ok(r.as_ref().map(job_row))
        })
    }

    fn claim_job(&self, node: &str, now: i64, lease_until: i64) -> Result<Option<Claimed>> {
        let cols = JOB_COLS.split(", ").map(|c| format!("j.{c}")).collect::<Vec<_>>().join(", ");
        self.with(|c| {
            let r = c
                .query_opt(
                    &format!(
                        "WITH picked AS (
                            SELECT id, status AS was FROM jobs
                            WHERE status = 'queued' OR (status = 'processing' AND lease_until <= $1)
                            ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
                         UPDATE jobs j SET status = 'processing', attempts = j.attempts + 1, updated_at = $1,
                                lease_owner = $2, lease_until = $3
                         FROM picked WHERE j.id = picked.id
                         RETURNING {cols}, picked.was"
                    ),
                    &[&now, &node, &lease_until],
                )
                .map_err(db_error)?;
            Ok(r.map(|r| {
                let was: String = r.get(14);
                Claimed { job: job_row(&r), took_over: was == "processing" }
            }))
        })
    }

    fn renew_lease(&self, id: &str, node: &str, lease_until: i64) -> Result<bool> {
        self.with(|c| {
            c.execute(
                "UPDATE jobs SET lease_until = $3 WHERE id = $1 AND lease_owner = $2 AND status = 'processing'",
                &[&id, &node, &lease_until],
            )
            .map(|n| n == 1)
            .map_err(db_error)
        })
    }

    fn finish_job(&self, fin: &Finish<'_>) -> Result<bool> {
        self.with(|c| {
            let mut tx = c.transaction().map_err(db_error)?;
            let n = tx
                .execute(
                    "UPDATE jobs SET status = $3, result = $4, input = NULL, updated_at = $5, lease_owner = NULL, lease_until = NULL
                     WHERE id = $1 AND lease_owner = $2 AND status = 'processing'",
                    &[&fin.id, &fin.node, &fin.status, &fin.result, &fin.now],
                )
                .map_err(db_error)?;
            if n != 1 {
                return Ok(false);
            }
            if let Some(reason) = fin.refund {
                refund_in(&mut tx, fin.id, reason, fin.now)?;
            }
            if let Some(d) = fin.delivery {
                insert_delivery_in(&mut tx, d, fin.now)?;
            }
            tx.commit().map_err(db_error)?;
            Ok(true)
        })
    }

    fn release_job(&self, id: &str, node: &str, now: i64) -> Result<bool> {
        self.tx(|tx| {
            let n = tx
                .execute(
                    "UPDATE jobs SET status = 'queued', updated_at = $3, lease_owner = NULL, lease_until = NULL
                     WHERE id = $1 AND lease_owner = $2 AND status = 'processing'",
                    &[&id, &node, &now],
                )
                .map_err(db_error)?;
            if n == 1 {
                notify_jobs(tx)?;
            }
            Ok(n == 1)
        })
    }

    fn release_expired_leases(&self, now: i64) -> Result<Vec<String>> {
        self.tx(|tx| {
            let rows = tx
                .query(
                    "UPDATE jobs SET status = 'queued', updated_at = $1, lease_owner = NULL, lease_until = NULL
                     WHERE id IN (SELECT id FROM jobs WHERE status = 'processing' AND lease_until <= $1 FOR UPDATE SKIP LOCKED)
                     RETURNING id",
                    &[&now],
                )
                .map_err(db_error)?;
            if !rows.is_empty() {
                notify_jobs(tx)?;
            }
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    fn interrupted_jobs(&self) -> Result<Vec<Job>> {
        self.with(|c| {
            let rows = c
                .query(&format!("SELECT {JOB_COLS} FROM jobs WHERE status = 'processing' ORDER BY created_at"), &[])
                .map_err(db_error)?;
            Ok(rows.iter().map(job_row).collect())
        })
    }

    fn requeue_job(&self, id: &str, now: i64) -> Result<()> {
        self.tx(|tx| {
            tx.execute(
                "UPDATE jobs SET status = 'queued', updated_at = $2, lease_owner = NULL, lease_until = NULL
                 WHERE id = $1 AND status = 'processing'",
                &[&id, &now],
            )
            .map_err(db_error)?;
            notify_jobs(tx)
        })
    }

    fn job_counts(&self) -> Result<Vec<(String, i64)>> {
        self.with(|c| {
            let rows =
                c.query("SELECT status, COUNT(*) FROM jobs GROUP BY status ORDER BY status", &[]).map_err(db_error)?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    fn live_blobs(&self) -> Result<Vec<String>> {
        self.with(|c| {
            let rows = c
                .query(
                    "SELECT input FROM jobs WHERE input IS NOT NULL AND status IN ('queued', 'processing')
                     UNION SELECT blob_id FROM uploads WHERE state = 'stored'",
                    &[],
                )
                .map_err(db_error)?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    fn insert_delivery(&self, d: &Delivery, now: i64) -> Result<()> {
        self.with(|c| insert_delivery_in(c, d, now))
    }

    fn claim_deliveries(&self, now: i64, limit: usize, hold_until: i64) -> Result<Vec<Delivery>> {
        let cols = DELIVERY_COLS.split(", ").map(|c| format!("d.{c}")).collect::<Vec<_>>().join(", ");
        self.with(|c| {
            let rows = c
                .query(
                    &format!(
                        "WITH due AS (
                            SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_at <= $1
                            ORDER BY next_at LIMIT $2 FOR UPDATE SKIP LOCKED)
                         UPDATE webhook_deliveries d SET next_at = $3 FROM due WHERE d.id = due.id
                         RETURNING {cols}"
                    ),
                    &[&now, &(limit as i64), &hold_until],
                )
                .map_err(db_error)?;
            Ok(rows.iter().map(delivery_row).collect())
        })
    }

    fn update_delivery(&self, id: &str, state: &str, attempts: i64, next_at: i64, status: Option<i64>) -> Result<()> {
        self.with(|c| {
            c.execute(
                "UPDATE webhook_deliveries SET state = $2, attempts = $3, next_at = $4, last_status = $5 WHERE id = $1",
                &[&id, &state, &attempts, &next_at, &status],
            )
            .map(|_| ())
            .map_err(db_error)
        })
    }

    fn put_shots(&self, shots: &[Shot]) -> Result<()> {
        self.tx(|tx| {
            for s in shots {
                tx.execute(
                    &format!("INSERT INTO screenshots ({SHOT_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"),
                    &[
                        &s.id,
                        &s.owner_id,
                        &s.account_id,
                        &s.name,
                        &s.ext,
                        &s.rv,
                        &s.rh,
                        &s.size,
                        &s.created_at,
                        &s.expires_at,
                    ],
                )
                .map_err(db_error)?;
            }
            Ok(())
        })
    }

    fn shot(&self, id: &str) -> Result<Option<Shot>> {
        self.with(|c| {
            let r =
                c.query_opt(&format!("SELECT {SHOT_COLS} FROM screenshots WHERE id = $1"), &[&id]).map_err(db_error)?;
            Ok(r.as_ref().map(shot_row))
        })
    }

    fn shots_of(&self, owner_id: &str, account_id: &str) -> Result<Vec<Shot>> {
        self.with(|c| {
            let rows = c
                .query(
                    &format!(
                        "SELECT {SHOT_COLS} FROM screenshots WHERE owner_id = $1 AND account_id = $2 ORDER BY seq"
                    ),
                    &[&owner_id, &account_id],
                )
                .map_err(db_error)?;
            Ok(rows.iter().map(shot_row).collect())
        })
    }

    fn expire_shots(&self, now: i64) -> Result<Vec<Shot>> {
        self.with(|c| {
            let rows = c
                .query(&format!("DELETE FROM screenshots WHERE expires_at <= $1 RETURNING {SHOT_COLS}"), &[&now])
                .map_err(db_error)?;
            Ok(rows.iter().map(shot_row).collect())
        })
    }

    fn delete_shots_of(&self, owner_id: &str) -> Result<Vec<Shot>> {
        self.with(|c| {
            let rows = c
                .query(&format!("DELETE FROM screenshots WHERE owner_id = $1 RETURNING {SHOT_COLS}"), &[&owner_id])
                .map_err(db_error)?;
            Ok(rows.iter().map(shot_row).collect())
        })
    }

    fn setting_or_insert(&self, key: &str, value: &str) -> Result<String> {
        self.with(|c| {
            c.execute(
                "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
                &[&key, &value],
            )
            .map_err(db_error)?;
            Ok(c.query_one("SELECT value FROM settings WHERE key = $1", &[&key]).map_err(db_error)?.get(0))
        })
    }

    fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        self.with(|c| {
            c.execute(
                "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                &[&key, &value],
            )
            .map(|_| ())
            .map_err(db_error)
        })
    }

    fn set_billing(
        &self,
        account_id: &str,
        plan: &str,
        customer_id: Option<&str>,
        provider: Option<&str>,
        subscription_id: Option<&str>,
    ) -> Result<bool> {
        self.with(|c| {
            c.execute(
                "UPDATE accounts SET plan = $2, customer_id = COALESCE($3, customer_id), subscription_provider = $4, subscription_id = $5 WHERE id = $1",
                &[&account_id, &plan, &customer_id, &provider, &subscription_id],
            )
            .map(|n| n > 0)
            .map_err(db_error)
        })
    }

    fn account_by_billing(&self, customer_id: Option<&str>, subscription_id: Option<&str>) -> Result<Option<Account>> {
        self.with(|c| {
            let r = c
                .query_opt(
                    &format!(
                        "SELECT {ACCOUNT_COLS} FROM accounts
                         WHERE ($1::TEXT IS NOT NULL AND subscription_id = $1) OR ($2::TEXT IS NOT NULL AND customer_id = $2)
                         ORDER BY (subscription_id IS NOT DISTINCT FROM $1) DESC LIMIT 1"
                    ),
                    &[&subscription_id, &customer_id],
                )
                .map_err(db_error)?;
            Ok(r.as_ref().map(account_row))
        })
    }

    fn first_billing_event(&self, id: &str, kind: &str, now: i64) -> Result<bool> {
        self.with(|c| {
            c.execute(
                "INSERT INTO billing_events (id, type, received_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
                &[&id, &kind, &now],
            )
            .map(|n| n == 1)
            .map_err(db_error)
        })
    }

    fn update_bucket(&self, key: &str, update: &mut (dyn FnMut(Option<Bucket>) -> Bucket + Send)) -> Result<()> {
        // A new bucket may be inserted by two nodes at once: the loser of
        // the insert reads the winner's row (now lockable) and goes again.
        blocking(|| {
            let mut c = self.pool.get()?;
            let out = (|| {
                for _ in 0..3 {
                    let mut tx = c.transaction().map_err(db_error)?;
                    let old = tx
                        .query_opt("SELECT units, at_ms FROM rate_buckets WHERE key = $1 FOR UPDATE", &[&key])
                        .map_err(db_error)?
                        .map(|r| Bucket { units: r.get(0), at_ms: r.get(1) });
                    let new = update(old);
                    let n = if old.is_some() {
                        tx.execute(
                            "UPDATE rate_buckets SET units = $2, at_ms = $3 WHERE key = $1",
                            &[&key, &new.units, &new.at_ms],
                        )
                    } else {
                        tx.execute(
                            "INSERT INTO rate_buckets (key, units, at_ms) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING",
                            &[&key, &new.units, &new.at_ms],
                        )
                    }
                    .map_err(db_error)?;
                    if n == 1 {
                        return tx.commit().map_err(db_error);
                    }
                }
                Err(Error::internal("database: a rate-limit bucket kept changing under its update"))
            })();
            self.pool.put(c);
            out
        })
    }

    fn prune_buckets(&self, before_ms: i64) -> Result<usize> {
        self.with(|c| {
            c.execute("DELETE FROM rate_buckets WHERE at_ms < $1", &[&before_ms]).map(|n| n as usize).map_err(db_error)
        })
    }

    fn exclusive(&self, name: &str, work: &mut (dyn FnMut() + Send)) -> Result<bool> {
        // A session lock on a connection held for the work: released when
        // the work ends, or by the server when this process dies.
        blocking(|| {
            let mut c = self.pool.get()?;
            let got = c
                .query_one("SELECT pg_try_advisory_lock($1, hashtext($2))", &[&LOCK_EXCLUSIVE, &name])
                .map(|r| r.get::<_, bool>(0))
                .map_err(db_error);
            let out = match got {
                Ok(true) => {
                    work();
                    c.execute("SELECT pg_advisory_unlock($1, hashtext($2))", &[&LOCK_EXCLUSIVE, &name])
                        .map(|_| true)
                        .map_err(db_error)
                }
                other => other,
            };
            self.pool.put(c);
            out
        })
    }

    fn shared(&self) -> bool {
        true
    }

    fn listen_jobs(&self, wake: Box<dyn Fn() + Send + Sync>) -> Result<()> {
        let config = self.pool.config.clone();
        std::thread::Builder::new()
            .name("meshcheck-listen".into())
            .spawn(move || listen_loop(&config, &*wake))
            .map(|_| ())
            .map_err(|e| Error::internal(format!("cannot start the LISTEN thread: {e}")))
    }
}

/// Holds a connection in `LISTEN meshcheck_jobs`, calling `wake` for each
/// notification; reconnects (with a pause) when the connection drops. Each
/// wait ends after a few seconds so a dropped connection is noticed.
fn listen_loop(config: &postgres::Config, wake: &(dyn Fn() + Send + Sync)) {
    loop {
        match config.connect(NoTls) {
            Ok(mut c) => {
                if let Err(e) = c.batch_execute(&format!("LISTEN {JOBS_CHANNEL}")) {
                    tracing::warn!(error = %e, "LISTEN failed");
                } else {
                    while !c.is_closed() {
                        {
                            let mut n = c.notifications();
                            let mut it = n.timeout_iter(Duration::from_secs(5));
                            loop {
                                match postgres::fallible_iterator::FallibleIterator::next(&mut it) {
                                    Ok(Some(_)) => wake(),
                                    Ok(None) => break,
                                    Err(e) => {
                                        tracing::warn!(error = %e, "the LISTEN connection failed");
                                        break;
                                    }
                                }
                            }
                        }
                        // An idle connection's failure shows on the next query.
                        if c.simple_query("").is_err() {
                            break;
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot connect to LISTEN for jobs; retrying"),
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}
